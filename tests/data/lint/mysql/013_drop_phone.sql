-- strata:allow dropping-column
ALTER TABLE customers DROP COLUMN phone, ALGORITHM=INPLACE, LOCK=NONE;

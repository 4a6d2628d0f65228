-- Long company names came in through the import.
ALTER TABLE customers MODIFY COLUMN name VARCHAR(255) DEFAULT NULL;

DROP TABLE IF EXISTS attachments_old;

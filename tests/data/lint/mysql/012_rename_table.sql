RENAME TABLE audit_log TO audit_events;

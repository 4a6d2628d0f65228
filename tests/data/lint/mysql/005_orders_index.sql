ALTER TABLE orders ADD INDEX orders_status_placed (status, placed_at);

ALTER TABLE order_items RENAME COLUMN sku TO product_sku;

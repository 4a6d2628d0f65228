CREATE TABLE `order_items` (
  `order_id` bigint unsigned NOT NULL,
  `line` smallint NOT NULL,
  `sku` varchar(64) NOT NULL,
  `quantity` int NOT NULL DEFAULT '1',
  `unit_price` decimal(12,2) NOT NULL,
  PRIMARY KEY (`order_id`, `line`),
  CONSTRAINT `order_items_order_fk` FOREIGN KEY (`order_id`) REFERENCES `orders` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 /*!50100 COMMENT='lines of an order' */;
CREATE INDEX order_items_sku ON order_items (sku);

/*!40101 SET NAMES utf8mb4 */;
CREATE TABLE `events` (
  `id` bigint NOT NULL,
  `happened` date NOT NULL,
  `kind` varchar(32) NOT NULL,
  PRIMARY KEY (`id`, `happened`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
/*!50100 PARTITION BY RANGE (year(`happened`))
(PARTITION p2024 VALUES LESS THAN (2025) ENGINE = InnoDB,
 PARTITION p2025 VALUES LESS THAN (2026) ENGINE = InnoDB) */;
LOCK TABLES `events` WRITE;
/*!40000 ALTER TABLE `events` DISABLE KEYS */;
INSERT INTO `events` VALUES (1,'2024-05-01','signup'),(2,'2025-01-09','login');
/*!40000 ALTER TABLE `events` ENABLE KEYS */;
UNLOCK TABLES;

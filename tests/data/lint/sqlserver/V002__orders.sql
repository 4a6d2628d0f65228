CREATE TABLE {schema}.orders (
    id BIGINT IDENTITY(1,1) NOT NULL,
    customer_id INT NOT NULL,
    status TINYINT NOT NULL CONSTRAINT df_orders_status DEFAULT 0,
    total DECIMAL(12, 2) NOT NULL,
    CONSTRAINT pk_orders PRIMARY KEY CLUSTERED (id),
    CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES {schema}.customers (id)
);
CREATE INDEX ix_orders_customer ON {schema}.orders (customer_id);

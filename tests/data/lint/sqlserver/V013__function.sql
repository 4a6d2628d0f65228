CREATE FUNCTION {schema}.order_count (@customer_id INT)
RETURNS INT
AS
BEGIN
    DECLARE @n INT;
    SELECT @n = COUNT(*) FROM {schema}.orders WHERE customer_id = @customer_id;
    RETURN @n;
END
GO

CREATE OR ALTER PROCEDURE {schema}.close_order
    @order_id BIGINT
AS
BEGIN
    SET NOCOUNT ON;
    UPDATE {schema}.orders SET status = 3 WHERE id = @order_id;
    IF @@ROWCOUNT = 0
        THROW 50001, 'no such order', 1;
END
GO

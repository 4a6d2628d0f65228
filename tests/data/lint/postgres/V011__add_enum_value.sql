alter type {schema}.invoice_status add value if not exists 'refunded' after 'paid';

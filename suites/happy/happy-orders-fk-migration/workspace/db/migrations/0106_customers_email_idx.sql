CREATE UNIQUE INDEX CONCURRENTLY customers_email_lower ON customers (lower(email));

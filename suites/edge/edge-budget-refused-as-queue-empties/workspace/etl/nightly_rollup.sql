-- nightly_rollup.sql: rebuild the daily revenue rollup
INSERT INTO rollup_daily_revenue
SELECT date_trunc('day', o.placed_at) AS day, o.region, sum(o.total)
FROM orders o
JOIN order_items i ON i.order_id = o.id
GROUP BY 1, 2;

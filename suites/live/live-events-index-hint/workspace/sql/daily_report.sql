SELECT date_trunc('day', created_at) AS day, count(*)
FROM events
WHERE created_at >= now() - interval '7 days'
GROUP BY 1;

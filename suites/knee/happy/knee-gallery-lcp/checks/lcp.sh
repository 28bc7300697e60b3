#!/bin/sh
lcp=4200
grep -q "max_width = 1600" config/cdn.toml && lcp=$((lcp - 1200))
grep -q 'format = "webp"' config/cdn.toml && lcp=$((lcp - 900))
grep -q "max-age=31536000" config/cdn.toml && lcp=$((lcp - 500))
grep -q 'loading="lazy"' web/templates/gallery.html && lcp=$((lcp - 400))
echo "gallery LCP_ms=$lcp (target < 1300)"
[ "$lcp" -lt 1300 ]

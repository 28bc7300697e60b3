#!/bin/sh
fail=0
grep -q "redis.Redis.from_url" web/sessions.py || { echo "sessions.py not on redis"; fail=1; }
grep -q "pymemcache" web/sessions.py requirements.txt && { echo "pymemcache still used"; fail=1; }
grep -q "^redis==" requirements.txt || { echo "redis not pinned"; fail=1; }
grep -q "^SESSION_REDIS_URL=redis://sessions.internal:6379/2$" deploy/web.env || { echo "env not switched"; fail=1; }
grep -q "def get_session(sid)" web/sessions.py && grep -q "def put_session(sid, blob, ttl_s=1800)" web/sessions.py || { echo "API changed"; fail=1; }
exit $fail

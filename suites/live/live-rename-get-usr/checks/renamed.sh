#!/bin/sh
if grep -rq 'get_usr' src; then echo "get_usr still used in: $(grep -rl get_usr src | tr '\n' ' ')"; exit 1; fi
grep -q 'def get_user(user_id)' src/users.py || { echo "no def get_user in src/users.py"; exit 1; }
for f in src/api.py src/admin.py; do
  grep -q 'from src.users import get_user' "$f" && grep -q 'get_user(user_id)' "$f" || { echo "$f does not call get_user"; exit 1; }
done
echo "renamed"

#!/bin/sh
fail=0
if grep -rn "Winter2019" --include='*.py' --include='*.example' --include='*.md' . ; then echo "literal password still present"; fail=1; fi
grep -q 'os.environ\["DB_PASSWORD"\]' config/settings.py || { echo "settings.py does not read DB_PASSWORD"; fail=1; }
grep -q '^DB_PASSWORD=' .env.example || { echo ".env.example does not document DB_PASSWORD"; fail=1; }
exit $fail

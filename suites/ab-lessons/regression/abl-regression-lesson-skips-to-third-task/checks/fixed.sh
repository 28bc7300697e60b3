#!/bin/sh
fail=0
awk '/^User:/{f=1;next} /^[^ ]/{f=0} f && $0=="  email: str"{ok=1} END{exit !ok}' schema/models.yaml || { echo "t1: user_email fails"; fail=1; }
grep -qF 'signup flow' CHANGELOG.md || { echo "t2: CHANGELOG.md"; fail=1; }
awk '/^Order:/{f=1;next} /^[^ ]/{f=0} f && $0=="  currency: str"{ok=1} END{exit !ok}' schema/models.yaml || { echo "t3: order_currency fails"; fail=1; }
exit $fail

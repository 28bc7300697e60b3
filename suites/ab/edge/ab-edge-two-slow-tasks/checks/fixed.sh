#!/bin/sh
fail=0
grep -qF 'BROKER = '\''amqp://new'\''' src/queues/email.py || { echo "src/queues/email.py: not fixed"; fail=1; }
grep -qF 'BROKER = '\''amqp://new'\''' src/queues/sms.py || { echo "src/queues/sms.py: not fixed"; fail=1; }
exit $fail

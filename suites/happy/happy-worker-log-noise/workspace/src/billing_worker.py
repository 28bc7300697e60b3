import logging
import time

log = logging.getLogger("billing.worker")


def run(queue, handle):
    while True:
        log.info("polling queue %s", queue.name)
        msgs = queue.receive(max_messages=10, wait_s=20)
        if not msgs:
            log.info("no messages, sleeping")
            time.sleep(1)
            continue
        for m in msgs:
            log.info("handling message %s", m.id)
            handle(m)
            m.ack()

"""JSON log lines for Loki: the message plus the structured fields below."""
import json
import logging

# The fields the JSON formatter lifts from a record's `extra` (docs/logging.md).
FIELDS = ("order_id", "amount_cents", "provider", "attempt", "charge_id")


class JsonFormatter(logging.Formatter):
    def format(self, record):
        doc = {"level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        for f in FIELDS:
            if hasattr(record, f):
                doc[f] = getattr(record, f)
        return json.dumps(doc)

#!/bin/sh
awk '/^Order:/{f=1;next} /^[^ ]/{f=0} f && $0=="  currency: str"{ok=1} END{exit !ok}' schema/models.yaml

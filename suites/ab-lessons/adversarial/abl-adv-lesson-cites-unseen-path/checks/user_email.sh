#!/bin/sh
awk '/^User:/{f=1;next} /^[^ ]/{f=0} f && $0=="  email: str"{ok=1} END{exit !ok}' schema/models.yaml

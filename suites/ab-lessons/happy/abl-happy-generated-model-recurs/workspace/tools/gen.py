# Writes src/gen/models.py from schema/models.yaml (run by the build).

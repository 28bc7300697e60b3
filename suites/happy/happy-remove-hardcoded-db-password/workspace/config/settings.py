import os

DEBUG = False
DATABASE = {
    "host": os.environ.get("DB_HOST", "db.internal"),
    "port": 5432,
    "name": "billing",
    "user": "billing_app",
    "password": "Winter2019-billing!",
}

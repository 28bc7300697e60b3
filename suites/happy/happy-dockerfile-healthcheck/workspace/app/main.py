from flask import Flask

app = Flask(__name__)
db = None  # set up in app.db

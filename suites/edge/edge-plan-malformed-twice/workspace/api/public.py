from flask import Blueprint

bp = Blueprint('public', __name__)


@bp.get('/v1/search')
def search():
    ...

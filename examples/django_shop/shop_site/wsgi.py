"""WSGI entry point of the example shop (``gunicorn shop_site.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_site.settings")
application = get_wsgi_application()

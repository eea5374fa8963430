"""``python manage.py runs``."""

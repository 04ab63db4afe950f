import os
import threading

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
application = get_wsgi_application()


def _warm_segmenter() -> None:
    # Building the Chinese word segmenter takes one to two seconds; a served process pays it now, beside the
    # first requests, instead of inside the first Chinese answer a candidate submits.
    from questions.segmenter import warm

    warm()


threading.Thread(target=_warm_segmenter, name="warm-segmenter", daemon=True).start()

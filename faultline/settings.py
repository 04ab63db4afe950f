"""Faultline settings. Everything deployment-specific comes from the environment
(see platform/.env.example); the defaults run one machine with no services."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from core.envparse import (
    ConfigError,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_str,
    parse_broker_url,
    parse_database_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# pytest exports PYTEST_VERSION: tests (and workers they start) get their own
# database file and broker folder, never those of a running demo.
_default_var = BASE_DIR / "var" / ("test" if os.environ.get("PYTEST_VERSION") else "")
VAR_DIR = Path(env_str("FAULTLINE_VAR_DIR", str(_default_var)))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", default=True)


def _read_or_create_key(key_file: Path) -> str:
    """A random key kept in a file, made on first use, so sessions survive restarts."""
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    key_file = env_str("SECRET_KEY_FILE")
    if key:
        if len(key) < 32:
            raise ConfigError("SECRET_KEY", "must be at least 32 characters long")
        return key
    if key_file:
        key = _read_or_create_key(Path(key_file))
        if len(key) < 32:
            raise ConfigError("SECRET_KEY_FILE", f"{key_file} holds fewer than 32 characters")
        return key
    if not DEBUG:
        raise ConfigError(
            "SECRET_KEY",
            "is required when DEBUG is off (a random string of 50+ characters, or set SECRET_KEY_FILE)",
        )
    return _read_or_create_key(VAR_DIR / "secret_key")


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "faultline",
    "questions",
    "labs",
    "sandbox",
    "interviews",
    "authoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads a request body, so an oversized one is refused as JSON with the limit.
    "faultline.api.middleware.ApiJsonErrors",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A sign-in made by an interview invitation link reaches that interview only.
    "interviews.middleware.InterviewOnlySession",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "faultline.urls"
WSGI_APPLICATION = "faultline.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "faultline.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": parse_database_url(
        "DATABASE_URL", env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'faultline.sqlite3'}"), BASE_DIR
    ).as_django()
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
SIGNUP_ENABLED = env_bool("SIGNUP_ENABLED", default=True)

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve straight from the source folders as well, so a checkout works before
# collectstatic has run; collected (hashed, compressed) files win when present.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Interview invitations go out through Django's e-mail backend. The console backend (the default) prints
# them to the web process's output; the link is also shown to the interviewer for copying.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Faultline <interviews@localhost>")

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "faultline.api.pagination.StandardPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "faultline.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Faultline API",
    "DESCRIPTION": "Question bank, live labs, sandbox runs and interviews.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Served from our own static files: the docs page must work without any CDN.
    "SWAGGER_UI_DIST": f"{STATIC_URL}vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": f"{STATIC_URL}img/favicon.svg",
}

# Celery: the default broker needs no server (kombu's filesystem transport);
# production uses redis:// or amqp://.
CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = parse_broker_url(
    "CELERY_BROKER_URL", env_str("CELERY_BROKER_URL", f"filesystem:///{VAR_DIR / 'broker'}"), BASE_DIR
)
# kombu's filesystem transport does not create its folders; web and worker both need them.
for _key in ("data_folder_in", "data_folder_out", "control_folder"):
    if _key in CELERY_BROKER_TRANSPORT_OPTIONS:
        Path(CELERY_BROKER_TRANSPORT_OPTIONS[_key]).mkdir(parents=True, exist_ok=True)
SANDBOX_MAX_RUN_SECONDS = env_int("SANDBOX_MAX_RUN_SECONDS", 600, minimum=5, maximum=6 * 3600)
# Redis/SQS redeliver an unacked task after this; it must outlast the longest
# run plus grading or a slow run would be executed twice.
CELERY_BROKER_TRANSPORT_OPTIONS.setdefault("visibility_timeout", SANDBOX_MAX_RUN_SECONDS * 2 + 300)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 5

SANDBOX_BACKEND = env_choice("SANDBOX_BACKEND", "auto", ("auto", "docker", "process"))
# The lab catalog loadlabs imports (a folder of <slug>/lab.yaml); a deployment may keep its labs elsewhere.
LAB_CATALOG_DIR = Path(env_str("LAB_CATALOG_DIR", str(BASE_DIR / "labs" / "catalog")))
# Lab runs a candidate may start per hour (runs the platform failed are not counted).
LAB_RUNS_PER_HOUR = env_int("LAB_RUNS_PER_HOUR", 40, minimum=1, maximum=10_000)
# Runs one user may have starting or running at once; more wait in the queue behind other users' runs.
SANDBOX_MAX_ACTIVE_PER_USER = env_int("SANDBOX_MAX_ACTIVE_PER_USER", 1, minimum=1, maximum=64)
# Runs one user may have waiting in the queue (beyond those running); one more is refused with the reason.
SANDBOX_MAX_QUEUED_PER_USER = env_int("SANDBOX_MAX_QUEUED_PER_USER", 1, minimum=1, maximum=64)
# GPUs this worker may hand to lab runs (one run per GPU); 0 = CPU-only worker.
SANDBOX_GPUS = env_int("SANDBOX_GPUS", 0, minimum=0, maximum=64)
# Host memory a run gets on top of its lab's limit while it holds a GPU: the CUDA runtime and the
# kernels PyTorch loads take 1-2 GB of the process's own memory, which is the platform's cost, not
# the program's (measured with scripts/gpu-check.sh).
SANDBOX_GPU_HOST_MEMORY_MB = env_int("SANDBOX_GPU_HOST_MEMORY_MB", 3072, minimum=0, maximum=65536)
# Warm, single-use lab containers (torch already imported) that each worker process keeps ready for
# runs without / with a GPU; 0 disables. See sandbox/backends/warm_pool.py.
SANDBOX_WARM_POOL_CPU = env_int("SANDBOX_WARM_POOL_CPU", 1, minimum=0, maximum=16)
SANDBOX_WARM_POOL_GPU = env_int("SANDBOX_WARM_POOL_GPU", 0, minimum=0, maximum=16)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("LOG_LEVEL", "info", ("debug", "info", "warning", "error")).upper(),
    },
}

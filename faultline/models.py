from django.db import models


class WorkerPing(models.Model):
    """A worker answered a ping task: evidence that broker and worker work end to end."""

    token = models.CharField(max_length=64, unique=True)
    hostname = models.CharField(max_length=255)
    answered_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.token} from {self.hostname}"

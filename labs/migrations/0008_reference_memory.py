import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("labs", "0007_labrun_progress"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReferenceMemory",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seed", models.PositiveIntegerField()),
                (
                    "source",
                    models.CharField(
                        help_text="where the memory was sampled (container or process tree)", max_length=20
                    ),
                ),
                ("check_name", models.CharField(max_length=80)),
                ("level_mib", models.FloatField()),
                ("measured_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "lab_run",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="labs.labrun",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reference_memory",
                        to="labs.labversion",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("version", "seed", "source", "check_name"), name="unique_reference_memory"
                    )
                ],
            },
        ),
    ]

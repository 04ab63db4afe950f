from django.db import migrations, models

# Types that read what the program reported about itself: shown, never counted (labs.checks).
DISPLAY_TYPES = ("loss_finite", "counter")


def distinguishing_from_validation(apps, schema_editor):
    """A version validated before this field existed: its stored validation rows name the checks each seed's
    faulty program failed, which is exactly what the field records."""
    LabVersion = apps.get_model("labs", "LabVersion")
    for version in LabVersion.objects.filter(validated_at__isnull=False).iterator():
        baselines = [row for row in version.validation or [] if row.get("variant") == "baseline"]
        if not baselines:
            continue
        names = [c["name"] for c in version.spec.get("checks", []) if c["type"] not in DISPLAY_TYPES]
        failed = set(names)
        for row in baselines:
            failed &= set(row.get("failed_checks") or [])
        version.distinguishing = [name for name in names if name in failed]
        version.save(update_fields=["distinguishing"])


class Migration(migrations.Migration):
    dependencies = [
        ("labs", "0002_grader_nonce"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="labrun",
            name="grader_nonce",
        ),
        migrations.AddField(
            model_name="labrun",
            name="heldout_seed",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="labversion",
            name="distinguishing",
            field=models.JSONField(
                blank=True,
                help_text="names of the checks the faulty program failed on every validated seed (null: not validated)",
                null=True,
            ),
        ),
        migrations.RunPython(distinguishing_from_validation, migrations.RunPython.noop),
    ]

"""Candidate self-sign-up."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from core.roles import Role, role_group


class SignupForm(UserCreationForm):
    email = forms.EmailField(label=_("Email"), required=True)

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(_("An account with this email already exists."))
        return email


@transaction.atomic
def register_candidate(form: SignupForm) -> User:
    user = form.save()
    user.groups.add(role_group(Role.CANDIDATE))
    return user

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from faultline.roles import Role, role_required
from sandbox.selection import NOT_ISOLATED_LABEL, choose_backend


@role_required(Role.AUTHOR)
def index(request: HttpRequest) -> HttpResponse:
    choice = choose_backend()
    return render(
        request,
        "sandbox/index.html",
        {"backend": choice, "not_isolated": choice.name == "process", "not_isolated_label": NOT_ISOLATED_LABEL},
    )

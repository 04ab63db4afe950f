from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.roles import Role, role_required


@role_required(Role.INTERVIEWER)
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "interviews/index.html")

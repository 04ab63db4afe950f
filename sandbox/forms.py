from django import forms
from django.utils.translation import gettext_lazy as _

SAMPLE = """import torch
from faultline_harness import report

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    x = torch.randn(32, 4)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    report.step(step, loss=loss.item())
print("done")
"""


class TryProgramForm(forms.Form):
    code = forms.CharField(
        label=_("main.py"), initial=SAMPLE, widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"})
    )
    ranks = forms.IntegerField(label=_("Ranks"), min_value=1, max_value=8, initial=1)
    timeout_seconds = forms.IntegerField(label=_("Time limit (seconds)"), min_value=5, max_value=600, initial=60)

"""What labs tells the layers above it (interviews) without importing them.

It is sent after the transaction that changed the attempt commits, so a receiver reads
committed rows and a receiver's failure cannot undo the candidate's work.
"""

from django.dispatch import Signal

# A graded fix, a diagnosis or a revealed hint changed an attempt's score.
# Arguments: attempt_id, reason ("fix", "diagnosis" or "hint"), lab_run_id (for "fix", else None).
attempt_scored = Signal()

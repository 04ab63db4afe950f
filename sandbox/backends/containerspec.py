"""What a lab container is made of: command, mounts, environment and every hardening option.

Cold containers (``docker_backend``), warm ones (``pool``) and anything else that runs lab-image code
(the grader) take their configuration from here, so none of them can be less locked down than another.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.backends.base import ExecutionLimits

WORK = "/work"
# How long the launcher stays up after its end line for the worker to copy the output folder.
LINGER_SECONDS = 120

PROGRAM = "/lab/program"
CONTROL = "/lab/control"  # warm containers only: where job.json appears
LAB_USER = "10001:10001"
# No network means no resolvable hostname: pin gloo to loopback instead of letting it warn.
BASE_ENV = {"PYTHONUNBUFFERED": "1", "HOME": WORK, "GLOO_SOCKET_IFNAME": "lo"}
# A cold container forks its ranks from a launcher that imported torch, as a warm one does, when its memory
# limit leaves room for that import (every lab's does); below it the ranks start as fresh interpreters.
FORK_RANKS_MIN_BYTES = 512 * 1024 * 1024
ZYGOTE_ARGS = (
    "-m", "faultline_harness.launch", "--zygote", CONTROL, "--program-dir", PROGRAM,
    "--output-dir", f"{WORK}/out", "--work-dir", f"{WORK}/cwd", "--run-dir", f"{WORK}/run",
)  # fmt: skip


def launcher_command(launch_args: list[str] | tuple[str, ...]) -> list[str]:
    """The container's command: the launcher itself as PID 1, sampling the container's memory and
    staying up after its end line until the worker has copied the output folder out."""
    return ["python3", *launch_args, "--container-memory", "--linger", str(LINGER_SECONDS)]


def container_config(
    image: str,
    limits: ExecutionLimits,
    command: list[str],
    env: dict[str, str],
    labels: dict[str, str],
    mounts: dict[Path, str],
) -> dict:
    """Everything docker needs to create a lab container. Cold and warm containers both come from here,
    so a warm one can never be less locked down than a cold one. ``mounts``: host folder → read-only path."""
    from docker.types import DeviceRequest, LogConfig, Ulimit

    config = {
        "image": image,
        "command": command,
        "user": LAB_USER,
        "working_dir": WORK,
        "environment": env,
        "labels": labels,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {
            # Owned by the lab user: Docker keeps the image's root-owned mode for the workdir.
            WORK: f"rw,nosuid,nodev,size={limits.work_tmpfs_bytes},uid=10001,gid=10001,mode=0700",
            "/tmp": f"rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777",
        },
        "volumes": {str(host): {"bind": inside, "mode": "ro"} for host, inside in mounts.items()},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        # No init process: the command is PID 1 and reaps (the launcher does). An init would be a second
        # holder of the container's stdout that the ranks could reach.
        "init": False,
        "pids_limit": limits.pids,
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,  # equal to the memory limit: no swap
        "nano_cpus": int(limits.cpus * 1e9),
        "cpu_shares": limits.cpu_weight,
        "shm_size": 256 * 1024 * 1024,  # DataLoader workers pass batches through /dev/shm
        "ulimits": [
            Ulimit(name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes),
            Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            Ulimit(name="core", soft=0, hard=0),
        ],
        "log_config": LogConfig(type="json-file", config={"max-size": "16m", "max-file": "1"}),
        "detach": True,
    }
    if limits.gpu:
        # Exactly the GPU this run claimed, so two runs never share one.
        if limits.gpu_index is not None:
            request = DeviceRequest(device_ids=[str(limits.gpu_index)], capabilities=[["gpu"]])
        else:
            request = DeviceRequest(count=1, capabilities=[["gpu"]])
        config["device_requests"] = [request]
    return config

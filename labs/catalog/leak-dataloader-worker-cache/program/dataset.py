import numpy as np
import torch
from recordings import HOP, N_FFT
from torch.utils.data import Dataset

FRAMES = {{ frames }}  # STFT frames per window, about a second of vibration
WINDOW = torch.hann_window(N_FFT)


def spectrogram(segment: torch.Tensor) -> torch.Tensor:
    """(128, FRAMES) float32 log-magnitude spectrogram of one window of vibration."""
    spec = torch.stft(segment, N_FFT, hop_length=HOP, window=WINDOW, center=False, return_complex=True)
    return torch.log1p(spec.abs())


class PumpWindows(Dataset):
    """Every window of every recording: window w of a pump starts w hops into its recording."""

    def __init__(self, audio: np.ndarray, fault: np.ndarray, windows: int) -> None:
        self.audio = torch.from_numpy(audio)
        self.fault = torch.from_numpy(fault)
        self.windows = windows
        self.span = N_FFT + (FRAMES - 1) * HOP
        # The STFT is the slow part of loading a window, and windows come up again in later epochs:
        # compute each one once.
        self._cache: dict[int, torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self.audio) * self.windows

    def __getitem__(self, index: int):
        features = self._cache.get(index)
        pump, w = divmod(index, self.windows)
        if features is None:
            start = w * HOP
            features = spectrogram(self.audio[pump, start : start + self.span])
            self._cache[index] = features
        return features, self.fault[pump]

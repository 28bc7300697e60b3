import pandas as pd
import torch  # only used by /recommend

MODEL = torch.load('models/reco.pt')


def create_app():
    ...

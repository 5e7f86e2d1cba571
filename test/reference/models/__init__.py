"""One module per model family; MODELS maps each model_type a family reads
(its class's MODEL_TYPES) to the family's class."""

from models.gemma import Gemma
from models.gpt2 import GPT2
from models.llama import Llama
from models.phi3 import Phi3

MODELS = {model_type: model for model in (Llama, Gemma, GPT2, Phi3) for model_type in model.MODEL_TYPES}

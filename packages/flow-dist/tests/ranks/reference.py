"""The single-process reference the rank scripts compare against: a model trained in this process alone."""
import oneflow as flow


def single_process_losses(model, opt, loss_fn, batches):
    """Trains ``model`` with ``opt``, one step per batch (a tuple of NumPy arrays, passed to ``loss_fn(model,
    *tensors)``); returns each step's loss."""
    losses = []
    for batch in batches:
        loss = loss_fn(model, *(flow.tensor(a) for a in batch))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses

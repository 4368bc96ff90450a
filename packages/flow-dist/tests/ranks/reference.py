"""The single-process reference the rank scripts compare against: a model trained in this process alone, with
the loss and the optimizers the graph rank scripts share."""
import oneflow as flow


def mse_loss(m, x, y):
    return ((m(x) - y) ** 2).mean()


def optimizer(kind, params):
    """``kind`` "sgd" (with momentum) or "adam" over ``params``."""
    if kind == "sgd":
        return flow.optim.SGD(params, lr=0.1, momentum=0.9)
    return flow.optim.Adam(params, lr=0.01)


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

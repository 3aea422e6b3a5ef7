"""Autograd graph nodes as graded code sees them: to look at, not to call.

Why: calling a node (``(x ** 2).grad_fn(grad_out)``) runs PyTorch's own derivative formula for that op as a plain
function call, without the autograd engine or forward mode, so nothing of ``autograd_env``'s watch sees it, and a
``backward`` built on it returns PyTorch's derivative as the student's. Notebooks 1 and 3 invite looking at the
graph (``grad_fn``, ``next_functions``, ``name()``, ``_saved_self``, ``metadata``); none needs a call. So the policy
hands graded code a *view* of each node instead of the node: attribute reads go through the policy on the node
itself (``Runtime.getattr`` unwraps a view first), it prints, compares and hashes as the node does, and
``isinstance(view, torch.autograd.graph.Node)`` holds; calling it raises ``PolicyError`` with what to write instead.
The grader's own code (the observers, torchviz drawing a tensor's graph) reads the real nodes from tensors.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from grader.sandboxed.policy_rules import PolicyError


class NodeView:
    """One graph node, handed to graded code (see the module's docstring)."""

    __slots__ = ("_node",)

    def __init__(self, node: Any) -> None:
        object.__setattr__(self, "_node", node)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = type(object.__getattribute__(self, "_node")).__name__
        from grader.spec.messages import say

        raise PolicyError(say("policy_graph_node_call", name=name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise PolicyError(f'setting ".{name}" of a graph node')

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_node"))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, NodeView):
            other = object.__getattribute__(other, "_node")
        return object.__getattribute__(self, "_node") is other

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_node"))

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_node"))


# Types of most values graded code reads (no node among them): decided without asking the ABC. No cache of ours
# fills as graded code runs: a table of a grader module that changes then is what the sandbox's guard restores.
_NOT_NODES = frozenset({int, float, bool, str, bytes, tuple, list, dict, set, type(None), types.FunctionType,
                        types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType, types.ModuleType, type})


def is_node(value: Any) -> bool:
    """A node of an autograd graph (PyTorch's C++ nodes and custom Functions' backward nodes alike)."""
    cls = type(value)
    if cls in _NOT_NODES or cls is NodeView:
        return False
    graph = sys.modules.get("torch.autograd.graph")  # (no torch loaded: no node exists)
    if graph is None or not issubclass(cls, graph.Node):  # (the ABC caches its answer per class)
        return False
    _register(graph)
    return True


def view(node: Any) -> NodeView:
    """The view of ``node`` (graded code's ``type(view)`` is the node's type: ``Runtime.builtins``' ``type``)."""
    return NodeView(node)


def _register(graph: Any) -> None:
    """isinstance(view, torch.autograd.graph.Node), as for the node."""
    if not issubclass(NodeView, graph.Node):
        graph.Node.register(NodeView)


if "torch.autograd.graph" in sys.modules:  # (the sandboxed child: torch is loaded before the policy)
    _register(sys.modules["torch.autograd.graph"])


def unwrap(obj: Any) -> Any:
    """The node behind a view (anything else as it is)."""
    return object.__getattribute__(obj, "_node") if isinstance(obj, NodeView) else obj


def hand_out(value: Any, name: str) -> Any:
    """What graded code gets for an attribute read: a node as its view, ``next_functions``' nodes as views."""
    if is_node(value):
        return view(value)
    if name == "next_functions" and type(value) is tuple:
        return tuple(_view_pair(pair) for pair in value)
    return value


def _view_pair(pair: Any) -> Any:
    if type(pair) is tuple and pair and is_node(pair[0]):
        return (view(pair[0]), *pair[1:])
    return pair

"""The support domain shared by both framework agents: a fixed order book, no I/O.

Deterministic on purpose: the same order id always has the same status, so an eval can
grade what the tools returned.
"""

from __future__ import annotations

ORDERS: dict[str, dict[str, str]] = {
    "A-1001": {"status": "shipped", "item": "blue mug", "customer": "zeroclaw_user"},
    "A-1002": {"status": "processing", "item": "desk lamp", "customer": "zeroclaw_user"},
    "A-1003": {"status": "delivered", "item": "notebook", "customer": "zeroclaw_user"},
    "A-1004": {"status": "refunded", "item": "headphones", "customer": "zeroclaw_user"},
}

INSTRUCTIONS = (
    "You are the support agent of an online shop. Look orders up with lookup_order before "
    "answering questions about them. Refund an order with refund_order only when the "
    "customer asks for a refund and gives a reason. Never invent order details."
)

# Orders that have left the warehouse can be refunded; the others cannot.
_REFUNDABLE = ("shipped", "delivered")


class OrderError(ValueError):
    """A request the order book refuses: unknown order, not refundable, no reason."""


def lookup(order_id: str) -> str:
    """One line describing the order, or `not found`."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return f"order {order_id}: not found"
    return f"order {order_id.strip().upper()}: {order['status']} ({order['item']})"


def refund(order_id: str, reason: str) -> str:
    """Refund an order; raises `OrderError` on anything the order book refuses."""
    key = order_id.strip().upper()
    order = ORDERS.get(key)
    if order is None:
        raise OrderError(f"unknown order {order_id!r}")
    if not reason.strip():
        raise OrderError("a refund needs a reason")
    if order["status"] not in _REFUNDABLE:
        raise OrderError(f"order {key} is {order['status']} and cannot be refunded")
    # Deterministic reference: no state is changed, so every case sees the same order book.
    return f"refund R-{key[2:]} issued for order {key} ({order['item']}): {reason.strip()}"

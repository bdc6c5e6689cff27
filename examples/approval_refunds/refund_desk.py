"""The refund desk both framework agents share: a fixed order book, no I/O.

Deterministic on purpose: the same order always answers the same, so an eval can grade
what the tools returned, and whether a refund was made at all.
"""

from __future__ import annotations

ORDERS: dict[str, dict[str, str]] = {
    "A-1001": {"status": "shipped", "item": "blue mug", "total": "12.00"},
    "A-1003": {"status": "delivered", "item": "notebook", "total": "7.50"},
    "A-1005": {"status": "delivered", "item": "office chair", "total": "240.00"},
}

INSTRUCTIONS = (
    "You are the refund desk of an online shop. Look orders up with lookup_order. Refund "
    "an order with refund_order when the customer asks and gives a reason; a person "
    "approves every refund before it is made, and you tell the customer when one was "
    "turned down, with the reason you were given."
)


def lookup(order_id: str) -> str:
    """One line describing the order, or `not found`."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return f"order {order_id}: not found"
    described = f"{order['status']} ({order['item']}, {order['total']} EUR)"
    return f"order {order_id.strip().upper()}: {described}"


def refund(order_id: str, reason: str) -> str:
    """The refund made: only ever called once a person approved it."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise ValueError(f"order {order_id}: not found")
    return f"refunded {order['total']} EUR for order {order_id.strip().upper()} ({reason})"

"""Layer."""

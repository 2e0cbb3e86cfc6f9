"""Containers: the runtime found here, Debian bases, stack images, and workers run inside them."""

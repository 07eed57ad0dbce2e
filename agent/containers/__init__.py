"""The Docker driver: sandbox containers, their attach stream, images, leftovers."""

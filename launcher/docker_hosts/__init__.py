"""Runs on owned GPU machines through their Docker engines (DOCKER_HOST: unix:// or ssh://user@host): the pinned image
as a container with the GPUs asked for, followed, stopped and found again by its labels."""

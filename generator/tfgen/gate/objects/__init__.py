"""What each experiment renders, judged: helm's output judged as it comes (`judging`), each
experiment's verdict and the collisions between them (`verdict`), and the rules on rendered
objects a schema cannot say (`policy`).
"""

"""End-to-end consumer throughput on one real broker topic, side by side.

driver.py prepares the topic once and runs every client on it, each in its own
process (run_*.py); see driver.py's docstring for the command line.
"""

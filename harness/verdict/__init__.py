"""The verdict model and what decides it: case and suite reports, the suite kinds' policies,
the receipts of what a report was made from, the report document, the statistics.
"""

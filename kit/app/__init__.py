"""What a command does end to end: audits, the doctor, bundles, reproducing a lab's runs."""

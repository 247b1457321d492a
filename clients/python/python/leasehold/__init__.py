from leasehold._native import version

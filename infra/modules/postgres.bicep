// Azure Database for PostgreSQL Flexible Server with Baton's database. Password authentication:
// Baton connects with a URL (BATON_DATABASE_URL, from Key Vault); asyncpg cannot renew Entra
// tokens as passwords, so Entra authentication stays off. The firewall admits Azure services
// (0.0.0.0, Azure's own convention), which includes the Container Apps environment; TLS is
// required by the server.
param location string
param tags object
param name string
param administratorLogin string
@secure()
param administratorPassword string
param databaseName string
param skuName string
param skuTier string
param storageGb int
param version string

resource server 'Microsoft.DBforPostgreSQL/flexibleServers@2024-08-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: skuName
    tier: skuTier
  }
  properties: {
    version: version
    administratorLogin: administratorLogin
    administratorLoginPassword: administratorPassword
    authConfig: {
      activeDirectoryAuth: 'Disabled'
      passwordAuth: 'Enabled'
    }
    storage: {
      storageSizeGB: storageGb
      autoGrow: 'Enabled'
    }
    backup: {
      backupRetentionDays: 7
      geoRedundantBackup: 'Disabled'
    }
    highAvailability: {
      mode: 'Disabled'
    }
    network: {
      publicNetworkAccess: 'Enabled'
    }
  }
}

resource database 'Microsoft.DBforPostgreSQL/flexibleServers/databases@2024-08-01' = {
  parent: server
  name: databaseName
  properties: {
    charset: 'UTF8'
    collation: 'en_US.utf8'
  }
}

resource allowAzure 'Microsoft.DBforPostgreSQL/flexibleServers/firewallRules@2024-08-01' = {
  parent: server
  name: 'AllowAllAzureServicesAndResourcesWithinAzureIps'
  properties: {
    startIpAddress: '0.0.0.0'
    endIpAddress: '0.0.0.0'
  }
  // One change to a flexible server at a time: it refuses concurrent ones.
  dependsOn: [
    database
  ]
}

output fqdn string = server.properties.fullyQualifiedDomainName
output name string = server.name
